package cli

import (
	"io"
	"strings"
)

// FlagSpec is one flag of a tool as shell completions need it, read from the tool's kong
// model so that completions never disagree with --help.
type FlagSpec struct {
	Long  string   // "format", without the dashes
	Short rune     // 'o', or 0
	Help  string   // the --help line, with its variables filled in
	Value bool     // takes a value (not a switch)
	Enum  []string // the values it accepts, when they are a fixed few
	Names string   // what a value names, for completion: "file", "dir" or ""
}

// Flags lists tool's flags (--help and --version included) and whether it takes file
// arguments (not when the tool renamed them to other words: Tool.args).
func Flags(tool *Tool) (flags []FlagSpec, files bool, err error) {
	p, _, err := newParser(tool, io.Discard, io.Discard, func(string) string { return "" })
	if err != nil {
		return nil, false, err
	}
	node := p.Model.Node
	seen := map[string]bool{}
	for _, f := range node.Flags {
		if f.Hidden || seen[f.Name] {
			continue
		}
		seen[f.Name] = true
		spec := FlagSpec{Long: f.Name, Short: f.Short, Help: f.Help, Value: !f.IsBool() && !f.IsCounter()}
		if spec.Value {
			if f.Enum != "" {
				for _, v := range strings.Split(f.Enum, ",") {
					if v = strings.TrimSpace(v); v != "" {
						spec.Enum = append(spec.Enum, v)
					}
				}
			}
			switch f.PlaceHolder {
			case "FILE":
				spec.Names = "file"
			case "DIR":
				spec.Names = "dir"
			}
		}
		flags = append(flags, spec)
	}
	for _, p := range node.Positional {
		files = files || p.Name == filesArg
	}
	return flags, files, nil
}
