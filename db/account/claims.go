package account

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/seckill/seckill/db/model"
)

// decodeClaims reads a token's JSON body into claims. A shopper's first
// request after a sale opens pays for it (Verify remembers the claims
// after), so the body SignClaims writes, an object of model.Claims's six
// keys with integers and strings free of escapes, is read by hand; any
// other (an escaped name, a key of another spelling) goes to
// encoding/json, whose answer is the one for every body.
func decodeClaims(body []byte) (model.Claims, error) {
	if c, ok := scanClaims(body); ok {
		return c, nil
	}
	var c model.Claims
	err := json.Unmarshal(body, &c)
	return c, err
}

// scanClaims reads {"key":value,...} with the keys of model.Claims spelt
// as its tags, plain decimal integers and strings without a backslash or
// a control character, in valid UTF-8 (encoding/json would mend what is
// not); ok is false for anything else.
func scanClaims(b []byte) (c model.Claims, ok bool) {
	i := 0
	next := func(want byte) bool {
		if i < len(b) && b[i] == want {
			i++
			return true
		}
		return false
	}
	str := func() (string, bool) {
		if !next('"') {
			return "", false
		}
		start := i
		for ; i < len(b); i++ {
			switch ch := b[i]; {
			case ch == '"':
				s := string(b[start:i])
				i++
				return s, true
			case ch == '\\' || ch < 0x20:
				return "", false
			}
		}
		return "", false
	}
	num := func() (int64, bool) {
		start := i
		next('-')
		digits := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == digits || (b[digits] == '0' && i-digits > 1) { // JSON has no leading zeros
			return 0, false
		}
		n, err := strconv.ParseInt(string(b[start:i]), 10, 64)
		return n, err == nil
	}
	if !utf8.Valid(b) || !next('{') {
		return c, false
	}
	for first := true; !next('}'); first = false {
		if !first && !next(',') {
			return c, false
		}
		key, okKey := str()
		if !okKey || !next(':') {
			return c, false
		}
		var okVal bool
		switch key {
		case "uid":
			c.UserID, okVal = num()
		case "exp":
			c.Expires, okVal = num()
		case "iat":
			c.IssuedAt, okVal = num()
		case "name":
			c.Username, okVal = str()
		case "role":
			c.Role, okVal = str()
		case "sid":
			c.SessionID, okVal = str()
		}
		if !okVal {
			return c, false
		}
	}
	return c, i == len(b)
}
