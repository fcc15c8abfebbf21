node --test --test-concurrency=1
