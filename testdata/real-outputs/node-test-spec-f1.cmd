node --test --test-reporter=spec test/
