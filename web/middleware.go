package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"mime"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/handlers"
)

// authenticate reads a bearer token or the session cookie; a valid one becomes
// the caller's claims. It costs no look-up: the token is signed.
func (s *Server) authenticate(c *fiber.Ctx) error {
	token, isBearer := requestToken(c)
	if isBearer {
		cl, err := s.tokens.Verify(token)
		if err != nil {
			return err // an explicit bad token is refused, never treated as anonymous
		}
		handlers.SetClaims(c, cl)
		return c.Next()
	}
	if token != "" {
		if cl, err := s.tokens.Verify(token); err == nil {
			handlers.SetClaims(c, cl)
		} else if strings.HasPrefix(c.Path(), "/api") {
			return err
		}
	}
	return c.Next()
}

// requireRole lets through callers holding one of roles: 401 when anonymous, 403 otherwise.
func requireRole(roles ...string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		cl, ok := handlers.ClaimsOf(c)
		if !ok {
			return db.ErrUnauthorized
		}
		for _, r := range roles {
			if cl.Role == r {
				return c.Next()
			}
		}
		return db.ErrForbidden
	}
}

// requireUser lets through any logged-in caller.
func requireUser(c *fiber.Ctx) error {
	if _, ok := handlers.ClaimsOf(c); !ok {
		return db.ErrUnauthorized
	}
	return c.Next()
}

const csrfCookie = "seckill_csrf"

// csrf protects HTML form posts. A logged-in user's pages carry the token of
// the session (account.Tokens.CSRF); anonymous pages (login, sign-up) one tied to
// a random cookie (signed, so a planted cookie does not help). Every form
// post outside /api must send the token back in _csrf.
func (s *Server) csrf(c *fiber.Ctx) error {
	var want string
	token := func() string {
		if want != "" {
			return want
		}
		if cl, ok := handlers.ClaimsOf(c); ok {
			want = s.tokens.CSRF(cl)
			return want
		}
		nonce := c.Cookies(csrfCookie)
		if nonce == "" {
			var b [18]byte
			rand.Read(b[:])
			nonce = base64.RawURLEncoding.EncodeToString(b[:])
			c.Cookie(&fiber.Cookie{Name: csrfCookie, Value: nonce, Path: "/", HTTPOnly: true, SameSite: "Lax", Secure: c.Protocol() == "https"})
		}
		want = s.tokens.MAC("csrf-anonymous:" + nonce)
		return want
	}
	handlers.SetCSRF(c, token) // a page asks for it only where it has a form
	if safeMethod(c.Method()) {
		return c.Next()
	}
	got := c.FormValue("_csrf")
	if got == "" {
		got = c.Get(headerCSRF)
	}
	if got == "" && c.Path() == "/lang" && ownOrigin(c) {
		// The language switch of a page served to everyone carries no token
		// (no cookie may be set there); the browser's Origin says it was
		// posted from this site, which is what the token would prove.
		return c.Next()
	}
	if !equalToken(got, token()) {
		return db.Errorf(db.EFORBIDDEN, "the form has expired; reload the page and try again")
	}
	return c.Next()
}

// headerCSRF carries the page's CSRF token (its <meta name="csrf-token">) on script calls.
const headerCSRF = "X-CSRF-Token"

// guardAPIWrites refuses /api writes a browser could be tricked into making.
// One riding on the session cookie (not a Bearer header, which no other site
// can make a browser send) needs the session's CSRF token in X-CSRF-Token or
// an Origin of this very site; a body must be declared JSON, which a
// cross-site form or a "simple" fetch cannot do.
func (s *Server) guardAPIWrites(c *fiber.Ctx) error {
	if safeMethod(c.Method()) {
		return c.Next()
	}
	if cl, ok := handlers.ClaimsOf(c); ok && !bearer(c) && !equalToken(c.Get(headerCSRF), s.tokens.CSRF(cl)) && !ownOrigin(c) {
		return db.Errorf(db.EFORBIDDEN, "cross-site request refused: send the page's %s header", headerCSRF)
	}
	if len(c.Body()) > 0 && !declaredJSON(c, requestHeader(c, headerContentType)) {
		return db.Errorf(db.EINVALID, "the body must be JSON sent with Content-Type: application/json")
	}
	return c.Next()
}

var headerContentType = headerKey(fiber.HeaderContentType)

// declaredJSON reports whether a body of type ct may reach an /api write:
// JSON, or a picture upload's multipart form (uploads.go; guardAPIWrites
// still holds it to the session's token). The plain "application/json"
// most writes declare is taken as it is, without parsing (and allocating)
// its parameters.
func declaredJSON(c *fiber.Ctx, ct string) bool {
	if ct == fiber.MIMEApplicationJSON {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == fiber.MIMEApplicationJSON || (mt == fiber.MIMEMultipartForm && uploadPath.MatchString(c.Path())))
}

func safeMethod(m string) bool {
	return m == fiber.MethodGet || m == fiber.MethodHead || m == fiber.MethodOptions
}

var headerAuthorization = headerKey(fiber.HeaderAuthorization)

// requestToken is the request's Bearer token (isBearer) or else its session cookie ("" for neither).
func requestToken(c *fiber.Ctx) (token string, isBearer bool) {
	if h := requestHeader(c, headerAuthorization); strings.HasPrefix(h, "Bearer ") {
		return strings.TrimPrefix(h, "Bearer "), true
	}
	return c.Cookies(handlers.SessionCookie), false
}

func bearer(c *fiber.Ctx) bool {
	_, isBearer := requestToken(c)
	return isBearer
}

// ownOrigin reports whether the request's Origin is this site: its scheme and host.
func ownOrigin(c *fiber.Ctx) bool {
	o := c.Get(fiber.HeaderOrigin)
	return o != "" && strings.EqualFold(o, c.Protocol()+"://"+string(c.Request().Host()))
}

func equalToken(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// observe records request counts and latency by route.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	status := c.Response().StatusCode()
	if err != nil {
		if fe, ok := err.(*fiber.Error); ok {
			status = fe.Code
		} else {
			status = handlers.StatusOf(db.ErrorCode(err))
		}
	}
	s.metrics.observe(c.Method(), c.Route().Path, status, time.Since(start)) // the monotonic clock alone
	return err
}
