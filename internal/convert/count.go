package convert

import (
	"errors"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// countFields are the fields of an Anthropic request that count_tokens takes and
// Convert writes, in the order they are copied; model comes first, from the caller.
var countFields = []string{"system", "tools", "tool_choice", "messages"}

// CountRequest makes t a body for Anthropic's count_tokens: the request Convert writes
// for it, reduced to what the endpoint takes (model, then system, tools and tool_choice
// when the conversation has them, and messages) with their bytes copied as converted, so
// what is counted is what would be sent. An empty model is the conversation's own, which
// Convert keeps only when it is a Claude model.
func CountRequest(t *transcript.Transcript, model string) ([]byte, error) {
	res, err := Convert(t, transcript.Anthropic)
	if err != nil {
		return nil, err
	}
	fields := gjson.GetManyBytes(res.Doc, append([]string{"model"}, countFields...)...)
	m := transcript.Quote(model)
	if model == "" {
		if fields[0].Type != gjson.String || fields[0].Str == "" {
			return nil, errors.New("count_tokens needs a Claude model, and the conversation names none")
		}
		m = fields[0].Raw
	}
	if !fields[len(fields)-1].IsArray() {
		return nil, errors.New("internal error: the converted document has no messages")
	}
	body := make([]byte, 0, len(res.Doc))
	body = append(append(body, `{"model":`...), m...)
	for i, name := range countFields {
		if f := fields[i+1]; f.Exists() {
			body = append(append(append(body, `,"`...), name...), `":`...)
			body = append(body, f.Raw...)
		}
	}
	return append(body, '}'), nil
}
