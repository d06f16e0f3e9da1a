"""The lint framework: findings, the rule registry (families and checks), the Context handed to checks (one
memo cache), config, baselines, dump-stage planning, the engine and the one scan path (scan.py) shared by
`hloscan check` and `hloscan.check()`. It knows no particular rule: rules register from hloscan.checks."""
