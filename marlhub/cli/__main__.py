"""``python -m marlhub.cli``: the ``marlhub`` command."""

from marlhub.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
