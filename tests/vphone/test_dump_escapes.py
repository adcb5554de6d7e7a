"""Text a model typed with a BEL or NUL in it made the virtual phone dump XML that is not
well-formed, so every attempt of that episode ended `error`. Android's dumper writes each
character XML cannot hold as "."; so does the virtual phone."""

import xml.etree.ElementTree as ET

from virtual_phone.hierarchy import Node, to_dump_xml, to_xml


def test_characters_xml_cannot_hold_are_dumped_as_dots():
    field = Node("android.widget.EditText", (0, 0, 100, 50), text="a\x07b\x00c\x1bd\tok & <fine>", pkg="p")
    root = Node("android.widget.FrameLayout", (0, 0, 100, 100), pkg="p", children=[field])
    for xml in (to_xml([root]), to_dump_xml(root)):
        texts = [n.get("text") for n in ET.fromstring(xml).iter("node")]
        assert "a.b.c.d ok & <fine>" in texts  # an attribute reads a tab as a space
