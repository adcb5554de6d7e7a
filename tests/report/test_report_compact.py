"""The report holds records compactly (report/compact.py); what it reads from them must be what
the records say."""

from agent_host.config.records import read_episode_log
from agent_host.report.compact import compact
from agent_host.report.load import load_run

from fixtures_report import make_run


def test_compact_records_read_and_dump_as_the_records_do(tmp_path):
    run = make_run(tmp_path)
    records = read_episode_log(run / "episodes.jsonl")
    held = load_run(run).records
    assert len(held) == len(records)
    for full, small in zip(records, held):
        assert small.model_dump() == full.model_dump()
        assert small.usage.prompt_tokens == full.usage.prompt_tokens and small.times.model == full.times.model
    assert compact(records[0]) == compact(records[0])
    same = [r.build for r in held if r.build == held[0].build]
    assert len(same) > 1 and len({id(b) for b in same}) == 1  # interned: one string, not a copy per record
