package views

import (
	"context"
	"strings"
	"testing"

	"github.com/seckill/seckill/views/i18n"
)

// The raffle's check command reads its comments in the page's language:
// every comment of the command is one the page translates, and on the
// Chinese page no comment is left in English while the commands stay.
func TestRaffleCheckInReadersLanguage(t *testing.T) {
	en := RaffleCheckCommand("https://shop.example", 7)
	zh := raffleCheckIn(i18n.With(context.Background(), i18n.Zh), "https://shop.example", 7)
	comments := 0
	for i, line := range strings.Split(zh, "\n") {
		enLine := strings.Split(en, "\n")[i]
		code, note, ok := strings.Cut(line, "# ")
		if !ok {
			continue
		}
		comments++
		if enCode, _, _ := strings.Cut(enLine, "# "); code != enCode {
			t.Errorf("line %d's command changed: %q, was %q", i+1, code, enCode)
		}
		if !strings.ContainsFunc(note, func(r rune) bool { return r >= 0x4e00 && r <= 0x9fff }) {
			t.Errorf("line %d's comment is not Chinese: %q", i+1, note)
		}
	}
	if comments != strings.Count(en, "# ") || comments != len(raffleCheckNotes) {
		t.Errorf("%d comments translated, the command has %d, %d known", comments, strings.Count(en, "# "), len(raffleCheckNotes))
	}
	if got := raffleCheckIn(i18n.With(context.Background(), i18n.En), "https://shop.example", 7); got != en {
		t.Errorf("the English page changes the command:\n%s", got)
	}
}
