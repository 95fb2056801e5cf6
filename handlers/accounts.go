package handlers

import (
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/audit"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

type credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Role     string `json:"role"`
}

// Register creates a shopper account: POST /api/auth/register.
func (h *Site) Register(c *fiber.Ctx) error {
	var in credentials
	if err := bind(c, &in); err != nil {
		return err
	}
	u, err := h.Accounts.CreateUser(c.UserContext(), in.Username, in.Password, model.RoleUser)
	h.auditSignIn(c, audit.ActionRegister, in.Username, u, err)
	if err != nil {
		return err
	}
	token := h.Tokens.Sign(u)
	h.setSession(c, token)
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"user": u, "token": token})
}

// Login checks credentials and answers a token: POST /api/auth/login.
func (h *Site) Login(c *fiber.Ctx) error {
	var in credentials
	if err := bind(c, &in); err != nil {
		return err
	}
	u, err := h.Accounts.SignIn(c.UserContext(), in.Username, in.Password, ClientIP(c))
	h.auditSignIn(c, audit.ActionLogin, in.Username, u, err)
	if err != nil {
		return err
	}
	token := h.Tokens.Sign(u)
	h.setSession(c, token)
	h.restoreLanguage(c, u.ID)
	return c.JSON(fiber.Map{"user": u, "token": token})
}

// Me answers the caller's account: GET /api/me.
func (h *Site) Me(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	u, err := h.Accounts.User(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"user": u})
}

// GetSettings answers the caller's reminder addresses: GET /api/me/settings.
func (h *Site) GetSettings(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	st, err := h.Accounts.UserSettings(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"settings": st})
}

// UpdateSettings changes the caller's reminder addresses: PUT /api/me/settings.
func (h *Site) UpdateSettings(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	var in model.SettingsUpdate
	if err := bind(c, &in); err != nil {
		return err
	}
	st, err := h.Accounts.UpdateSettings(c.UserContext(), cl.UserID, in)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"settings": st})
}

// SettingsPage shows the caller's reminder addresses.
func (h *Site) SettingsPage(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	st, err := h.Accounts.UserSettings(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return render(c, fiber.StatusOK, views.SettingsPage(h.page(c, "Settings"), views.SettingsForm{Email: st.Email, WebhookURL: st.WebhookURL}))
}

// SettingsForm saves the caller's reminder addresses from the settings form.
func (h *Site) SettingsForm(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	form := views.SettingsForm{Email: c.FormValue("email"), WebhookURL: c.FormValue("webhook_url")}
	_, err = h.Accounts.UpdateSettings(c.UserContext(), cl.UserID, model.SettingsUpdate{Email: &form.Email, WebhookURL: &form.WebhookURL})
	if status, shown := refusal(err); shown {
		form.Error = db.ErrorMessage(err)
		return render(c, status, views.SettingsPage(h.page(c, "Settings"), form))
	} else if err != nil {
		return err
	}
	return redirectWithNote(c, "/settings", views.FlashSuccess, views.PlaceSettings, "Settings saved.")
}

// PasswordForm changes the caller's password from Settings: POST
// /settings/password. Every other session ends (as PUT /api/me/password);
// this browser carries on with a fresh session. The answer is shown beside
// the form.
func (h *Site) PasswordForm(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	u, err := h.Accounts.ChangePassword(c.UserContext(), cl.UserID, c.FormValue("current_password"), c.FormValue("new_password"))
	if _, shown := refusal(err); shown {
		return redirectWithNote(c, "/settings#password", views.FlashError, views.PlacePassword, db.ErrorMessage(err))
	} else if err != nil {
		return err // backing off (shown beside the form by FormRefused), busy or broken
	}
	h.setSession(c, h.Tokens.Sign(u))
	return redirectWithNote(c, "/settings#password", views.FlashSuccess, views.PlacePassword, "Password changed. Every other device is signed out.")
}

// FormRefused shows a rate-limit refusal of a sign-in, sign-up or password
// form on that form, with the seconds until the next try (retryAfter), in
// place of an error page; handled is false for any other request.
func (h *Site) FormRefused(c *fiber.Ctx, retryAfter int) (handled bool, err error) {
	if c.Method() != fiber.MethodPost {
		return false, nil
	}
	form := views.AuthForm{Username: c.FormValue("username"), Next: safeNext(c.FormValue("next")), RetryAfter: max(retryAfter, 1)}
	switch c.Path() {
	case "/login":
		return true, render(c, fiber.StatusTooManyRequests, views.LoginPage(h.formPage(c, "Log in"), form))
	case "/register":
		return true, render(c, fiber.StatusTooManyRequests, views.RegisterPage(h.formPage(c, "Sign up"), form))
	case "/settings/password":
		return true, redirectWithNote(c, "/settings#password", views.FlashError, views.PlacePassword,
			"Too many attempts. Try again in "+strconv.Itoa(form.RetryAfter)+" s.")
	}
	return false, nil
}

// CreateUser lets an admin add an account of any role: POST /api/admin/users.
func (h *Site) CreateUser(c *fiber.Ctx) error {
	var in credentials
	if err := bind(c, &in); err != nil {
		return err
	}
	u, err := h.Accounts.CreateUser(c.UserContext(), in.Username, in.Password, in.Role)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"user": u})
}

// LoginPage shows the login form.
func (h *Site) LoginPage(c *fiber.Ctx) error {
	return render(c, fiber.StatusOK, views.LoginPage(h.formPage(c, "Log in"), views.AuthForm{Next: safeNext(c.Query("next"))}))
}

// LoginForm handles the login form post.
func (h *Site) LoginForm(c *fiber.Ctx) error {
	form := views.AuthForm{Username: c.FormValue("username"), Next: safeNext(c.FormValue("next"))}
	u, err := h.Accounts.SignIn(c.UserContext(), form.Username, c.FormValue("password"), ClientIP(c))
	h.auditSignIn(c, audit.ActionLogin, form.Username, u, err)
	if status, shown := refusal(err); shown {
		form.Error = db.ErrorMessage(err)
		return render(c, status, views.LoginPage(h.formPage(c, "Log in"), form))
	} else if err != nil {
		return err // backing off (shown on this form by FormRefused), busy or broken
	}
	h.setSession(c, h.Tokens.Sign(u))
	h.restoreLanguage(c, u.ID)
	next := form.Next
	if next == "/" && u.Role != model.RoleUser {
		next = "/admin"
	}
	return redirectWithFlash(c, next, "Welcome back, "+u.Username+".")
}

// RegisterPage shows the sign-up form.
func (h *Site) RegisterPage(c *fiber.Ctx) error {
	return render(c, fiber.StatusOK, views.RegisterPage(h.formPage(c, "Sign up"), views.AuthForm{Next: safeNext(c.Query("next"))}))
}

// RegisterForm handles the sign-up form post.
func (h *Site) RegisterForm(c *fiber.Ctx) error {
	form := views.AuthForm{Username: c.FormValue("username"), Next: safeNext(c.FormValue("next"))}
	u, err := h.Accounts.CreateUser(c.UserContext(), form.Username, c.FormValue("password"), model.RoleUser)
	h.auditSignIn(c, audit.ActionRegister, form.Username, u, err)
	if status, shown := refusal(err); shown {
		form.Error = db.ErrorMessage(err)
		return render(c, status, views.RegisterPage(h.formPage(c, "Sign up"), form))
	} else if err != nil {
		return err // backing off (shown on this form by FormRefused), busy or broken
	}
	h.setSession(c, h.Tokens.Sign(u))
	return redirectWithFlash(c, form.Next, "Welcome, "+u.Username+"! Your account is ready.")
}

// LogoutAPI ends the caller's session on every process and clears the
// cookie: POST /api/auth/logout.
func (h *Site) LogoutAPI(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	h.clearSession(c)
	if err := h.endSession(c, cl); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// Logout ends the session and clears its cookie: the HTML logout form.
func (h *Site) Logout(c *fiber.Ctx) error {
	h.clearSession(c)
	if cl, ok := ClaimsOf(c); ok {
		if err := h.endSession(c, cl); err != nil {
			return err
		}
	}
	return redirectWithFlash(c, "/", "You are logged out.")
}

type passwordChange struct {
	Current string `json:"current_password"`
	New     string `json:"new_password"`
}

// ChangePassword replaces the caller's password, ending all of the caller's
// sessions, and answers a fresh token: PUT /api/me/password.
func (h *Site) ChangePassword(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	var in passwordChange
	if err := bind(c, &in); err != nil {
		return err
	}
	u, err := h.Accounts.ChangePassword(c.UserContext(), cl.UserID, in.Current, in.New)
	if err != nil {
		return err
	}
	token := h.Tokens.Sign(u)
	if c.Cookies(SessionCookie) != "" {
		h.setSession(c, token)
	}
	return c.JSON(fiber.Map{"user": u, "token": token})
}

// endSession revokes the session of cl.
func (h *Site) endSession(c *fiber.Ctx, cl model.Claims) error {
	if h.Tokens.Revocations == nil {
		return db.Errorf(db.EINTERNAL, "sessions cannot be ended in this process")
	}
	return h.Tokens.Revocations.Revoke(c.UserContext(), cl)
}

func (h *Site) clearSession(c *fiber.Ctx) {
	c.Cookie(&fiber.Cookie{Name: SessionCookie, Value: "", Path: "/", Expires: time.Unix(1, 0), HTTPOnly: true, SameSite: "Lax", Secure: c.Protocol() == "https"})
}

// safeNext keeps post-login redirects on this site: only a local path (and
// query) is kept, anything else becomes "/". Browsers drop TAB, CR and LF
// from URLs and read a backslash as a slash, so "/<TAB>/evil.example" or
// "/\evil.example" would leave the site; such characters are refused
// outright rather than cleaned.
func safeNext(next string) string {
	if len(next) == 0 || next[0] != '/' || strings.HasPrefix(next, "//") {
		return "/"
	}
	for _, r := range next {
		if r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	return next
}
