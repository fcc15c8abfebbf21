package tokens

import (
	"slices"
	"strings"
	"testing"
)

func TestLookupModel(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		window     int
	}{
		{"claude-sonnet-4-5", "claude-sonnet-4-5", 200_000},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5", 200_000},
		{"Claude-Sonnet-4-5-20250929", "claude-sonnet-4-5", 200_000},
		{"claude-sonnet-4-20250514", "claude-sonnet-4", 200_000},
		{"claude-opus-4-20250514", "claude-opus-4", 200_000},
		{"claude-opus-4-1-20250805", "claude-opus-4-1", 200_000},
		{"claude-opus-4-5-20251101", "claude-opus-4-5", 200_000},
		{"claude-haiku-4-5-20251001", "claude-haiku-4-5", 200_000},
		{"claude-3-7-sonnet-latest", "claude-3-7-sonnet", 200_000},
		{"claude-3-5-haiku-20241022", "claude-3-5-haiku", 200_000},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5", 200_000},
		{"claude-sonnet-4-5@20250929", "claude-sonnet-4-5", 200_000},
		{"anthropic/claude-sonnet-4.5", "claude-sonnet-4-5", 200_000},
		{"gpt-4o", "gpt-4o", 128_000},
		{"gpt-4o-2024-08-06", "gpt-4o", 128_000},
		{"GPT-4o-mini-2024-07-18", "gpt-4o-mini", 128_000},
		{"openai/gpt-4.1", "gpt-4.1", 1_047_576},
		{"gpt-4.1-2025-04-14", "gpt-4.1", 1_047_576},
		{"gpt-4.1-mini-2025-04-14", "gpt-4.1-mini", 1_047_576},
		{"o3-2025-04-16", "o3", 200_000},
		{"o3-pro", "o3", 200_000},
		{"o4-mini-2025-04-16", "o4-mini", 200_000},
		{"gpt-5", "gpt-5", 400_000},
		{"gpt-5-2025-08-07", "gpt-5", 400_000},
		{"gpt-5-mini-2025-08-07", "gpt-5-mini", 400_000},
		{"gpt-5-codex", "gpt-5-codex", 400_000},
		{"gpt-5.1-codex-max", "gpt-5.1-codex-max", 400_000},
		{"gpt-5-chat-latest", "gpt-5-chat-latest", 128_000},
		{"codex-mini-latest", "codex-mini-latest", 200_000},
		{" gpt-4-0613 ", "gpt-4", 8_192},
	} {
		m, ok := LookupModel(tc.name)
		if !ok || m.Name != tc.want || m.Window != tc.window {
			t.Errorf("LookupModel(%q) = %+v, %v; want %s with window %d", tc.name, m, ok, tc.want, tc.window)
		}
	}
	for _, name := range []string{"", "claude", "gpt", "gpt-4x", "gpt-5x", "o", "o35", "llama-3.1-70b", "gemini-2.5-pro", "claude-opus-5"} {
		if m, ok := LookupModel(name); ok {
			t.Errorf("LookupModel(%q) = %s, want no match", name, m.Name)
		}
	}
}

func TestModels(t *testing.T) {
	ms := Models()
	if !slices.IsSortedFunc(ms, func(a, b Model) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Models() is not sorted by name")
	}
	names := map[string]bool{}
	for _, m := range ms {
		if names[m.Name] {
			t.Errorf("%s listed twice", m.Name)
		}
		names[m.Name] = true
		if m.Name != normalizeModel(m.Name) {
			t.Errorf("%s: not in normal form, LookupModel cannot find it exactly", m.Name)
		}
		if m.Provider != "anthropic" && m.Provider != "openai" {
			t.Errorf("%s: provider %q", m.Name, m.Provider)
		}
		if m.Window <= 0 || m.MaxOutput <= 0 || m.MaxOutput > m.Window || m.MaxInput < 0 || m.MaxInput+m.MaxOutput > m.Window {
			t.Errorf("%s: window %d, output %d, input %d", m.Name, m.Window, m.MaxOutput, m.MaxInput)
		}
		if (m.Provider == "anthropic") != (m.Tokenizer == "") {
			t.Errorf("%s: tokenizer %q", m.Name, m.Tokenizer)
		}
		if m.Tokenizer != "" {
			if _, err := New(m.Tokenizer); err != nil {
				t.Errorf("%s: %v", m.Name, err)
			}
		}
	}
	for _, want := range []string{
		"claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-3-7-sonnet", "claude-3-5-haiku",
		"gpt-4o", "gpt-4o-mini", "gpt-4.1", "o3", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5-codex",
	} {
		if !names[want] {
			t.Errorf("model table lacks %s", want)
		}
	}
	ms[0].Window = -1
	if Models()[0].Window == -1 {
		t.Error("Models() shares the table with its caller")
	}
}

func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		model                   string
		window, reserve         int
		wantWindow, wantReserve int
	}{
		{"", 0, 0, 200_000, 20_000},
		{"claude-sonnet-4-5-20250929", 0, 0, 200_000, 20_000},
		{"claude-3-5-haiku", 0, 0, 200_000, 8_192}, // its whole output limit
		{"gpt-4o", 0, 0, 128_000, 16_384},
		{"gpt-4.1", 0, 0, 1_047_576, 20_000},
		{"gpt-5", 0, 0, 400_000, 128_000}, // input is capped at 272,000
		{"gpt-5-codex", 0, 0, 400_000, 128_000},
		{"gpt-5", 300_000, 0, 300_000, 20_000}, // a given window is not the model's
		{"gpt-4", 0, 0, 8_192, 2_048},          // a quarter of a small window
		{"", 100_000, 0, 100_000, 20_000},
		{"", 16_000, 0, 16_000, 4_000},
		{"", 0, 50_000, 200_000, 50_000},
		{"gpt-5", 0, 10_000, 400_000, 10_000},
		{"my-finetune", 50_000, 0, 50_000, 12_500}, // unknown but the window is given
	} {
		b, err := Window(tc.model, tc.window, tc.reserve)
		if err != nil {
			t.Errorf("Window(%q, %d, %d): %v", tc.model, tc.window, tc.reserve, err)
			continue
		}
		want := Budget{Model: tc.model, Window: tc.wantWindow, Reserve: tc.wantReserve, Effective: tc.wantWindow - tc.wantReserve}
		if b != want {
			t.Errorf("Window(%q, %d, %d) = %+v, want %+v", tc.model, tc.window, tc.reserve, b, want)
		}
	}
}

func TestWindowErrors(t *testing.T) {
	for _, tc := range []struct {
		model           string
		window, reserve int
		want            []string // substrings of the error
	}{
		{"claude-sonet-4-5", 0, 0, []string{`unknown model "claude-sonet-4-5"`, `did you mean "claude-sonnet-4-5"`}},
		{"gpt4o", 0, 0, []string{`did you mean "gpt-4o"`}},
		{"gtp-5-codex", 0, 0, []string{`"gpt-5-codex"`}},
		{"llama-3.1-70b", 0, 0, []string{`unknown model "llama-3.1-70b"`, "give the window"}},
		{"", 1_000, 5_000, []string{"leaves no room"}},
		{"", 20_000, 20_000, []string{"leaves no room"}},
		{"", -1, 0, []string{"negative"}},
		{"", 0, -1, []string{"negative"}},
	} {
		_, err := Window(tc.model, tc.window, tc.reserve)
		if err == nil {
			t.Errorf("Window(%q, %d, %d) succeeded", tc.model, tc.window, tc.reserve)
			continue
		}
		for _, s := range tc.want {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("Window(%q, %d, %d) error %q lacks %q", tc.model, tc.window, tc.reserve, err, s)
			}
		}
	}
}
