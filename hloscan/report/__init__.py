"""Pictures of what hloscan computes: the HBM timeline and VMEM bars (data, then drawing) and the HTML report.

timeline.py and vmem_bars.py are pure data (no plotting library): what `hloscan hbm --timeline` writes and
what the charts draw. charts.py draws them with matplotlib, html.py renders the report with Jinja2, svg.py
cleans SVG before it is inlined; those three need the optional extra `report` (`pip install
"hloscan[report]"`) and import it only when called (extra.py says what is missing). Nothing here prints: the
commands in cli/ do.
"""
