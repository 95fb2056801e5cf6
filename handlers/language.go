package handlers

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/views/i18n"
)

// LangCookie keeps the language the reader picked with the switch (or
// their account had picked, set again at sign-in).
const LangCookie = "seckill_lang"

// Language puts the reader's language on the request's context: the
// language cookie; else, for a signed-in caller (a bearer token, a browser
// without the cookie), the language their account picked; else the
// browser's Accept-Language. Pages are written in it and the API's error
// messages too (the codes never change).
func (h *Site) Language(c *fiber.Ctx) error {
	l, ok := i18n.Parse(c.Cookies(LangCookie))
	if !ok {
		l = acceptLanguage(utils.UnsafeString(c.Request().Header.PeekCanonical(headerAcceptLanguage)))
	}
	if cl, signedIn := ClaimsOf(c); signedIn && !ok {
		// Looked up only if words are written: most answers of the API have none.
		ctx, browser, userID := c.UserContext(), l, cl.UserID
		c.SetUserContext(i18n.WithLazy(ctx, func() i18n.Lang {
			if picked, ok := h.accountLanguage(ctx, userID); ok {
				return picked
			}
			return browser
		}))
	} else if l != i18n.En { // English is what a context without a language reads
		c.SetUserContext(i18n.With(c.UserContext(), l))
	}
	if h := &c.Response().Header; len(h.PeekCanonical(headerVary)) == 0 {
		h.SetCanonical(headerVary, varyLanguage) // what c.Vary makes of an empty Vary
	} else {
		c.Vary(fiber.HeaderAcceptLanguage, fiber.HeaderCookie)
	}
	return c.Next()
}

// accountLanguage is the language the account picked (false: none), as
// the accounts keep it (in memory on a web process, current within a pick's
// message: account.Locales). A read that fails is no pick: the request
// falls back to the browser's language.
func (h *Site) accountLanguage(ctx context.Context, userID int64) (i18n.Lang, bool) {
	tag, err := h.Accounts.Locale(ctx, userID)
	if err != nil {
		return "", false
	}
	return i18n.Parse(tag)
}

// acceptLanguage is i18n.FromAcceptLanguage, remembered for the headers seen
// (browsers send a few alike, and reading one's q values costs more than the
// rest of a cached read): up to acceptLanguagesMax of them, each of at most
// 256 bytes, copied out of the request they came in.
func acceptLanguage(header string) i18n.Lang {
	if header == "" {
		return i18n.En
	}
	if l, ok := acceptLanguages.Load(header); ok {
		return l.(i18n.Lang)
	}
	l := i18n.FromAcceptLanguage(header)
	if acceptLanguagesHeld.Load() < acceptLanguagesMax && len(header) <= 256 {
		if _, loaded := acceptLanguages.LoadOrStore(strings.Clone(header), l); !loaded {
			acceptLanguagesHeld.Add(1)
		}
	}
	return l
}

var headerAcceptLanguage = headerKey(fiber.HeaderAcceptLanguage)

var (
	acceptLanguages     sync.Map // Accept-Language → i18n.Lang
	acceptLanguagesHeld atomic.Int64
)

const acceptLanguagesMax = 1024

// SetLanguage is the language switch on every page: POST /lang with lang
// (zh-CN or en) and back (where to go back to). It keeps the choice in a
// cookie and, for a signed-in reader, on the account.
func (h *Site) SetLanguage(c *fiber.Ctx) error {
	l, ok := i18n.Parse(c.FormValue("lang"))
	if !ok {
		return db.Errorf(db.EINVALID, "lang: one of zh-CN, en")
	}
	if cl, signedIn := ClaimsOf(c); signedIn {
		if err := h.Accounts.SetLocale(c.UserContext(), cl.UserID, string(l)); err != nil {
			return err
		}
	}
	setLangCookie(c, l)
	return c.Redirect(safeNext(c.FormValue("back")), fiber.StatusSeeOther)
}

// setLangCookie keeps l as the reader's language in this browser for a year.
func setLangCookie(c *fiber.Ctx, l i18n.Lang) {
	c.Cookie(&fiber.Cookie{Name: LangCookie, Value: string(l), Path: "/", SameSite: "Lax",
		Secure: c.Protocol() == "https", MaxAge: int((365 * 24 * time.Hour).Seconds())})
}

// restoreLanguage gives a browser that signs in the language the account
// picked, if it picked one.
func (h *Site) restoreLanguage(c *fiber.Ctx, userID int64) {
	tag, err := h.Accounts.Locale(c.UserContext(), userID)
	if l, ok := i18n.Parse(tag); err == nil && ok {
		setLangCookie(c, l)
	}
}
