npx jest --verbose --ci --runInBand --cacheDirectory .jest-cache
