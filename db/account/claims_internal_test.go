package account

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/seckill/seckill/db/model"
	"pgregory.net/rapid"
)

// decodeClaims answers as encoding/json does, for every body: the bodies
// SignClaims writes (any name, any role, any number) and those bodies
// changed byte by byte (what the hand-read path must refuse or read alike).
func TestDecodeClaimsAnswersAsJSON(t *testing.T) {
	claims := rapid.Custom(func(t *rapid.T) model.Claims {
		return model.Claims{
			UserID:    rapid.Int64().Draw(t, "uid"),
			Username:  rapid.String().Draw(t, "name"),
			Role:      rapid.SampledFrom([]string{model.RoleUser, model.RoleMerchant, model.RoleAdmin, "a\"b", "<&>", "\x01"}).Draw(t, "role"),
			Expires:   rapid.Int64().Draw(t, "exp"),
			SessionID: rapid.StringMatching(`[A-Za-z0-9_\-"\\é]{0,24}`).Draw(t, "sid"),
			IssuedAt:  rapid.Int64().Draw(t, "iat"),
		}
	})
	same := func(t interface{ Fatalf(string, ...any) }, body []byte) {
		var want model.Claims
		wantErr := json.Unmarshal(body, &want)
		got, err := decodeClaims(body)
		if (err != nil) != (wantErr != nil) || (err == nil && got != want) {
			t.Fatalf("%q: decodeClaims answers %+v (%v), encoding/json %+v (%v)", body, got, err, want, wantErr)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		body, err := json.Marshal(claims.Draw(t, "claims"))
		if err != nil {
			t.Fatal(err)
		}
		same(t, body)
		// The same body with a few bytes changed, put in or cut out, many
		// times over (bytes of JSON's grammar, a zero, half a character).
		for v := range 20 {
			b := append([]byte(nil), body...)
			for range rapid.IntRange(1, 3).Draw(t, fmt.Sprintf("edits %d", v)) {
				at := rapid.IntRange(0, len(b)-1).Draw(t, "at")
				c := rapid.SampledFrom([]byte("{}\":,-0123456789e \\ux\xc3")).Draw(t, "byte")
				switch rapid.IntRange(0, 2).Draw(t, "op") {
				case 0:
					b[at] = c
				case 1:
					b = append(b[:at:at], append([]byte{c}, b[at:]...)...)
				default:
					b = append(b[:at:at], b[at+1:]...)
				}
				if len(b) == 0 {
					break
				}
			}
			same(t, b)
		}
	})
	// What the changes above may miss, each once.
	for _, body := range []string{
		`{"uid":07,"sid":"s"}`, `{"uid":-07,"sid":"s"}`, `{"uid":-0,"sid":"s"}`, `{"uid":-,"sid":"s"}`, `{"uid":,"sid":"s"}`,
		`{"uid":1e3,"sid":"s"}`, `{"uid":1.0,"sid":"s"}`, `{"uid":99999999999999999999,"sid":"s"}`,
		"{\"uid\":1,\"name\":\"a\xffb\",\"sid\":\"s\"}", "{\"uid\":1,\"name\":\"\xc3\",\"sid\":\"s\"}",
		`{"uid":1,"name":"a\"b","sid":"s"}`, `{"uid":1,"name":"\u00e9","sid":"s"}`, "{\"uid\":1,\"name\":\"a\tb\",\"sid\":\"s\"}",
		`{"UID":1,"sid":"s"}`, `{"uid":1,"uid":2,"sid":"s"}`, `{"uid":1,"name":null,"sid":"s"}`, `{"uid":1,"other":1,"sid":"s"}`,
		`{ "uid":1,"sid":"s"}`, `{"uid":1,"sid":"s"} `, `{"uid":1,"sid":"s"}x`, `{"uid":1,"sid":"s",}`, `{,"uid":1}`, `{}`, `{`, `[]`, `null`,
	} {
		same(t, []byte(body))
	}
	// The fast path is taken for what SignClaims writes (else it saves nothing).
	body, _ := json.Marshal(model.Claims{UserID: 7, Username: "ann", Role: model.RoleUser, Expires: 1e9, SessionID: "s-1", IssuedAt: 1e15})
	if _, ok := scanClaims(body); !ok {
		t.Fatalf("%s is read by encoding/json, not by hand", body)
	}
}
