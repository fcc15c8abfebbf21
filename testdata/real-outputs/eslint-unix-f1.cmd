npx eslint --format unix src/
