"""Entry point of ``python -m kafka_balancer.localbed``."""

import sys

from kafka_balancer.localbed.cli import main

sys.exit(main())
