import sys

from oomrec.cli import main

sys.exit(main())
