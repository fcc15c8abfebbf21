package budget

// Class is what a line of command output says, as ctx-budget's cut reads it: the one
// classifier of command output (DESIGN §3), which ctx-recall's outline of a stored log
// uses too.
type Class uint8

// The classes a line can have; Other is a line that says nothing in particular.
const (
	Other Class = iota
	TestFailure
	Error
	Diagnostic
	Frame
	Warning
)

// String names the class.
func (c Class) String() string {
	switch c {
	case TestFailure:
		return "test"
	case Error:
		return "error"
	case Diagnostic:
		return "diagnostic"
	case Frame:
		return "frame"
	case Warning:
		return "warning"
	}
	return "other"
}

// Classify gives each line the class ctx-budget's cut gives it for what it says (a failing
// test or a summary of counts, an error, a compiler's or linter's diagnostic, a stack
// frame, a warning), with its rules for lines said again or too often: a repeated line and
// most lines of a shape that many share are Other. Lines kept only as context or as the
// output's first and last lines are Other too.
func Classify(lines []string) []Class {
	kind, _, _ := classify(lines, nil, nil, 0)
	out := make([]Class, len(lines))
	for i, k := range kind {
		switch k {
		case kindTest:
			out[i] = TestFailure
		case kindError:
			out[i] = Error
		case kindDiagnostic:
			out[i] = Diagnostic
		case kindFrame:
			out[i] = Frame
		case kindWarning:
			out[i] = Warning
		}
	}
	return out
}
