"""Entry point of ``python -m kafka_balancer_dev.localbed``."""

import sys

from kafka_balancer_dev.localbed.cli import main

sys.exit(main())
