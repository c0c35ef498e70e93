import sys

from oomrec.entry import main

sys.exit(main())
