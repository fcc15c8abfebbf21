package human

import "testing"

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567", 100000: "100,000"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestClip(t *testing.T) {
	if got := Clip("héllo", 2); got != "h…" { // the é is two bytes: not split
		t.Errorf("Clip = %q", got)
	}
	if got := Clip("abc", 3); got != "abc" {
		t.Errorf("Clip = %q", got)
	}
	if got := Label("a  b\n c  dddd", 6); got != "a b c…" {
		t.Errorf("Label = %q", got)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 950: "950 B", 1234: "1.2 KB", 34_000_000: "34 MB", 9_960: "10.0 KB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestShort(t *testing.T) {
	for n, want := range map[int]string{0: "0", 950: "950", 1234: "1.2K", 34_000: "34K", 832_157: "832K", 2_856_814: "2.9M"} {
		if got := Short(n); got != want {
			t.Errorf("Short(%d) = %q, want %q", n, got, want)
		}
	}
}
