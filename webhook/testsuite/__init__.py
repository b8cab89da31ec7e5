"""`quartermaster test`: Kyverno CLI test suites run through the offline admission path."""
