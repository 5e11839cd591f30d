import sys

from nodewright.cli import main

sys.exit(main())
