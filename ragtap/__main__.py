import sys

from ragtap.cli import main

sys.exit(main())
