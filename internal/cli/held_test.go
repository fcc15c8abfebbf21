package cli

import (
	"bytes"
	"fmt"
	"testing"
)

// TestHeldOutputOrder: writes and held documents come out in the order they were made,
// and a write after a held document does not touch it.
func TestHeldOutputOrder(t *testing.T) {
	var h heldOutput
	doc := []byte("{\"doc\":1}\n")
	fmt.Fprint(&h, "a")
	fmt.Fprint(&h, "b")
	h.hold(doc)
	fmt.Fprint(&h, "c")
	var out bytes.Buffer
	if _, err := h.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "ab{\"doc\":1}\nc" {
		t.Errorf("got %q", got)
	}
	if string(doc) != "{\"doc\":1}\n" {
		t.Errorf("the held document changed: %q", doc)
	}
}
