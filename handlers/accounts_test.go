package handlers

import "testing"

func TestSafeNext(t *testing.T) {
	for _, tc := range []struct{ next, want string }{
		{"/", "/"},
		{"/goods/42", "/goods/42"},
		{"/slots?day=today&x=1", "/slots?day=today&x=1"},
		{"/me/orders#paid", "/me/orders#paid"},
		{"/%E2%9C%93", "/%E2%9C%93"},
		{"", "/"},
		{"goods/42", "/"},
		{"//evil.example/", "/"},
		{"/\\evil.example", "/"},
		{"/\t/evil.example/", "/"}, // what /%09/evil.example/ decodes to
		{"/\r\n/evil.example", "/"},
		{"/ /evil.example", "/"},
		{"/a\\b", "/"},
		{"/\x00x", "/"},
		{"/\u2028x", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/\xff", "/"},
	} {
		if got := safeNext(tc.next); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.next, got, tc.want)
		}
	}
}
