package db

import (
	"strings"
	"testing"
)

func TestTextProblem(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		max       int
		multiline bool
		want      string
	}{
		{"plain", "Phone X", 100, false, ""},
		{"accents and CJK", "Café 秒杀 🎉", 100, false, ""},
		{"surrounding space trimmed", "  Phone \n", 100, false, ""},
		{"empty is for the caller", "", 100, false, ""},
		{"at the limit", strings.Repeat("é", 100), 100, false, ""},
		{"over the limit", strings.Repeat("é", 101), 100, false, "is longer than 100 characters"},
		{"limit counts after trimming", "  " + strings.Repeat("x", 100) + "  ", 100, false, ""},
		{"NUL", "Pho\x00ne", 100, false, "must not contain control characters (found U+0000)"},
		{"ESC", "\x1b[31mred", 100, false, "must not contain control characters (found U+001B)"},
		{"bell", "ding\a", 100, false, "must not contain control characters (found U+0007)"},
		{"DEL", "a\x7fb", 100, false, "must not contain control characters (found U+007F)"},
		{"C1 CSI", "a\u009bb", 100, false, "must not contain control characters (found U+009B)"},
		{"tab in a title", "a\tb", 100, false, "must not contain control characters (found U+0009)"},
		{"newline in a title", "a\nb", 100, false, "must be a single line"},
		{"CR in a title", "a\rb", 100, false, "must be a single line"},
		{"zero-width space", "a\u200bb", 100, false, "must not contain control characters (found U+200B)"},
		{"right-to-left mark", "a\u200fb", 100, false, "must not contain control characters (found U+200F)"},
		{"emoji joined by ZWJ", "family \u200d ok 👨\u200d👩\u200d👧", 100, false, ""},
		{"right-to-left override", "evil\u202Etxt.exe", 100, false, "must not contain control characters (found U+202E)"},
		{"left-to-right embedding", "a\u202ab", 100, false, "must not contain control characters (found U+202A)"},
		{"isolate", "a\u2066b\u2069", 100, false, "must not contain control characters (found U+2066)"},
		{"byte-order mark", "\ufeffPhone", 100, false, "must not contain control characters (found U+FEFF)"},
		{"invalid UTF-8", "Pho\xffne", 100, false, "is not valid UTF-8 text"},
		{"truncated UTF-8", "caf\xc3", 100, false, "is not valid UTF-8 text"},
		{"lines in a description", "line one\nline two\r\n\tindented", 2000, true, ""},
		{"lone CR in a description", "a\rb", 2000, true, "must be a single line"},
		{"NUL in a description", "a\n\x00", 2000, true, "must not contain control characters (found U+0000)"},
		{"ESC in a description", "a\x1b", 2000, true, "must not contain control characters (found U+001B)"},
		{"override in a description", "a\u202eb", 2000, true, "must not contain control characters (found U+202E)"},
		{"long description", strings.Repeat("é", 2001), 2000, true, "is longer than 2000 characters"},
	} {
		if got := TextProblem(tc.in, tc.max, tc.multiline); got != tc.want {
			t.Errorf("%s: TextProblem(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestCheckText(t *testing.T) {
	if err := CheckText("title", "fine", 100, false); err != nil {
		t.Fatalf("fine text: %v", err)
	}
	err := CheckText("title", "a\x00b", 100, false)
	if err == nil || FieldOf(err) != "title" || ErrorCode(err) != EINVALID ||
		ErrorMessage(err) != "title: must not contain control characters (found U+0000)" {
		t.Fatalf("got %#v (%q), want an invalid error on title", err, ErrorMessage(err))
	}
}
