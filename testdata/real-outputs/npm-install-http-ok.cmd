npm install --loglevel=http semver qs minimist ms chalk@4.1.2
