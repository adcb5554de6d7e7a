"""agent-host: does this build of this model still get real phone tasks done?"""

__version__ = "0.1.0"
