"""`python -m hloscan` runs the command line."""

from hloscan.cli import run

if __name__ == "__main__":
    run()
