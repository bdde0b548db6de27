"""`python -m bme_cli`: the same as the `bme` console script."""
from .cli import main

if __name__ == "__main__":
    main()
