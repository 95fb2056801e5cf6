package db

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds on text a user can set, in characters after trimming surrounding space.
const (
	MaxEmailBytes = 254 // RFC 5321's limit on a forward path, in bytes
)

// TextProblem says what is wrong with text a user typed, or "" when nothing
// is: invalid UTF-8, a control character (C0, DEL, C1) or an invisible
// format or bidi control (zero-width space, direction marks, embeddings and
// overrides, isolates, the byte-order mark), or more than max characters once
// surrounding space is trimmed. Multiline text may hold tabs, newlines and
// CRLF line ends. The problem reads after the field's name: "is longer than
// 100 characters".
func TextProblem(s string, max int, multiline bool) string {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return "is not valid UTF-8 text"
	}
	for i, r := range s {
		if multiline && (r == '\n' || r == '\t' || (r == '\r' && strings.HasPrefix(s[i+1:], "\n"))) {
			continue
		}
		if forbiddenRune(r) {
			if r == '\n' || r == '\r' {
				return "must be a single line"
			}
			return fmt.Sprintf("must not contain control characters (found U+%04X)", r)
		}
	}
	if utf8.RuneCountInString(s) > max {
		return fmt.Sprintf("is longer than %d characters", max)
	}
	return ""
}

// CheckText is TextProblem as an invalid-input error naming field, or nil.
func CheckText(field, s string, max int, multiline bool) *InvalidFields {
	if p := TextProblem(s, max, multiline); p != "" {
		return FieldErrorf(field, "%s", p)
	}
	return nil
}

// forbiddenRune reports whether r may not appear in text a user sets: it
// would be invisible, reorder what follows, or break a log or terminal line.
func forbiddenRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f: // C0, DEL, C1
		return true
	// The zero-width non-joiner and joiner (U+200C, U+200D) stay allowed:
	// Persian and Indic text and emoji sequences such as 👨‍👩‍👧 need them.
	case r == 0x200b || r == 0x200e || r == 0x200f: // zero-width space; LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e: // bidi embeddings and overrides
		return true
	case r >= 0x2066 && r <= 0x2069: // bidi isolates
		return true
	case r == 0xfeff: // byte-order mark, zero-width no-break space
		return true
	}
	return false
}
