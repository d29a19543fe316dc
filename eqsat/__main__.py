import sys

from eqsat.cli import main

sys.exit(main())
