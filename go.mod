module github.com/ctxkit/ctxkit

go 1.25.0

require (
	github.com/alecthomas/kong v1.17.0
	github.com/dlclark/regexp2 v1.11.0
	github.com/mattn/go-isatty v0.0.24
	github.com/pkoukk/tiktoken-go v0.1.8
	github.com/pkoukk/tiktoken-go-loader v0.0.2
	github.com/rogpeppe/go-internal v1.16.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/tidwall/gjson v1.20.1
	github.com/tidwall/sjson v1.2.7
	golang.org/x/sys v0.28.0
	golang.org/x/term v0.27.0
	golang.org/x/tools v0.26.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/google/uuid v1.3.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	golang.org/x/text v0.14.0 // indirect
)
