"""The optional Prometheus source of broker cpu and network (see :mod:`.source`)."""
