package scenarios

import (
	"context"
	"strings"
	"testing"
)

// The flags: -smoke shrinks every size; a rehearsal needs -target and
// stays modest where its flags say nothing; sizes must be positive; "all"
// leaves out the scenarios run only when named.
func TestParseOptions(t *testing.T) {
	o, err := ParseOptions([]string{"-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Users != 60 || o.Conc != 8 || o.Requests != 120 || o.Rounds != 2 || o.Fair != smokeFairConfig() || o.Crowd != smokeCrowdConfig() {
		t.Errorf("smoke options: %+v", o)
	}
	if !o.wants("goods") || !o.wants("crowd") || o.wants("fair") {
		t.Errorf("-scenarios all: goods %v, crowd %v, fair %v", o.wants("goods"), o.wants("crowd"), o.wants("fair"))
	}
	if _, err := ParseOptions([]string{"-rehearsal"}); err == nil || !strings.Contains(err.Error(), "-target") {
		t.Errorf("-rehearsal without -target: %v", err)
	}
	o, err = ParseOptions([]string{"-rehearsal", "-target", "http://127.0.0.1:1", "-n", "500"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Users != rehearsalDefaults["users"] || o.Conc != rehearsalDefaults["c"] || o.Requests != 500 {
		t.Errorf("rehearsal sizes: users %d, c %d, n %d", o.Users, o.Conc, o.Requests)
	}
	if _, err := ParseOptions([]string{"-c", "0"}); err == nil {
		t.Error("-c 0 accepted")
	}
}

// Without -url the bench needs an Opener to start its server, and says so.
func TestRunWithoutOpener(t *testing.T) {
	o, err := ParseOptions([]string{"-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	o.Progress = nil
	if _, err := Run(context.Background(), o, nil); err == nil || !strings.Contains(err.Error(), "-url") {
		t.Errorf("Run without an Opener: %v", err)
	}
}

// The child modes the bench starts its own binary in are known by name.
func TestChild(t *testing.T) {
	for _, name := range []string{"bench-ws-clients", "bench-slow-bodies"} {
		if Child(name) == nil {
			t.Errorf("no child mode %s", name)
		}
	}
	if Child("serve") != nil {
		t.Error("serve is a child mode of the bench")
	}
}
