package model

import "testing"

func TestYuan(t *testing.T) {
	for cents, want := range map[int64]string{0: "0.00", 5: "0.05", 990: "9.90", 84915: "849.15", -120: "-1.20"} {
		if got := Yuan(cents); got != want {
			t.Errorf("Yuan(%d) = %q, want %q", cents, got, want)
		}
	}
}

func TestUsernameMatches(t *testing.T) {
	for _, c := range []struct {
		name, q string
		want    bool
	}{
		{"alice", "", true}, {"alice", "al", true}, {"alice", "ALI", true}, {"alice", "@alice", true},
		{"alice", " alice ", true}, {"alice", "lice", false}, {"alice", "alicex", false}, {"al_ce", "al_", true},
	} {
		if got := UsernameMatches(c.name, c.q); got != c.want {
			t.Errorf("UsernameMatches(%q, %q) = %v, want %v", c.name, c.q, got, c.want)
		}
	}
}
