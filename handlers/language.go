package handlers

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/views/i18n"
)

// LangCookie keeps the language the reader picked with the switch (or
// their account had picked, set again at sign-in).
const LangCookie = "seckill_lang"

// Language puts the reader's language on the request's context: the
// language cookie, else the browser's Accept-Language. Pages are written in
// it and the API's error messages too (the codes never change).
func Language(c *fiber.Ctx) error {
	l, ok := i18n.Parse(c.Cookies(LangCookie))
	if !ok {
		l = i18n.FromAcceptLanguage(c.Get(fiber.HeaderAcceptLanguage))
	}
	if l != i18n.En { // English is what a context without a language reads
		c.SetUserContext(i18n.With(c.UserContext(), l))
	}
	c.Vary(fiber.HeaderAcceptLanguage, fiber.HeaderCookie)
	return c.Next()
}

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
