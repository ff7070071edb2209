import sys

from quotatop.cli import main

sys.exit(main())
