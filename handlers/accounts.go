package handlers

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/views"
)

type credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Role     string `json:"role"`
}

// Register creates a shopper account: POST /api/auth/register.
func (h *Handlers) Register(c *fiber.Ctx) error {
	var in credentials
	if err := bind(c, &in); err != nil {
		return err
	}
	u, err := h.Store.CreateUser(c.UserContext(), in.Username, in.Password, db.RoleUser)
	h.auditSignIn(c, db.AuditRegister, in.Username, u, err)
	if err != nil {
		return err
	}
	token := h.Tokens.Sign(u)
	h.setSession(c, token)
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"user": u, "token": token})
}

// Login checks credentials and answers a token: POST /api/auth/login.
func (h *Handlers) Login(c *fiber.Ctx) error {
	var in credentials
	if err := bind(c, &in); err != nil {
		return err
	}
	u, err := h.Store.SignIn(c.UserContext(), in.Username, in.Password, ClientIP(c))
	h.auditSignIn(c, db.AuditLogin, in.Username, u, err)
	if err != nil {
		return err
	}
	token := h.Tokens.Sign(u)
	h.setSession(c, token)
	return c.JSON(fiber.Map{"user": u, "token": token})
}

// Me answers the caller's account: GET /api/me.
func (h *Handlers) Me(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	u, err := h.Store.User(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"user": u})
}

// GetSettings answers the caller's reminder addresses: GET /api/me/settings.
func (h *Handlers) GetSettings(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	st, err := h.Store.UserSettings(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"settings": st})
}

// UpdateSettings changes the caller's reminder addresses: PUT /api/me/settings.
func (h *Handlers) UpdateSettings(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	var in db.SettingsUpdate
	if err := bind(c, &in); err != nil {
		return err
	}
	st, err := h.Store.UpdateSettings(c.UserContext(), cl.UserID, in)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"settings": st})
}

// CreateUser lets an admin add an account of any role: POST /api/admin/users.
func (h *Handlers) CreateUser(c *fiber.Ctx) error {
	var in credentials
	if err := bind(c, &in); err != nil {
		return err
	}
	u, err := h.Store.CreateUser(c.UserContext(), in.Username, in.Password, in.Role)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"user": u})
}

// LoginPage shows the login form.
func (h *Handlers) LoginPage(c *fiber.Ctx) error {
	return render(c, fiber.StatusOK, views.LoginPage(h.page(c, "Log in"), views.AuthForm{Next: safeNext(c.Query("next"))}))
}

// LoginForm handles the login form post.
func (h *Handlers) LoginForm(c *fiber.Ctx) error {
	form := views.AuthForm{Username: c.FormValue("username"), Next: safeNext(c.FormValue("next"))}
	u, err := h.Store.SignIn(c.UserContext(), form.Username, c.FormValue("password"), ClientIP(c))
	h.auditSignIn(c, db.AuditLogin, form.Username, u, err)
	if err != nil {
		status := fiber.StatusUnauthorized
		switch db.ErrorCode(err) {
		case db.EINTERNAL:
			return err
		case db.ERATELIMITED:
			status = fiber.StatusTooManyRequests
		case db.EUNAVAILABLE:
			status = fiber.StatusServiceUnavailable
		}
		form.Error = db.ErrorMessage(err)
		return render(c, status, views.LoginPage(h.page(c, "Log in"), form))
	}
	h.setSession(c, h.Tokens.Sign(u))
	next := form.Next
	if next == "/" && u.Role != db.RoleUser {
		next = "/admin"
	}
	return redirectWithFlash(c, next, "Welcome back, "+u.Username+".")
}

// RegisterPage shows the sign-up form.
func (h *Handlers) RegisterPage(c *fiber.Ctx) error {
	return render(c, fiber.StatusOK, views.RegisterPage(h.page(c, "Sign up"), views.AuthForm{}))
}

// RegisterForm handles the sign-up form post.
func (h *Handlers) RegisterForm(c *fiber.Ctx) error {
	form := views.AuthForm{Username: c.FormValue("username")}
	u, err := h.Store.CreateUser(c.UserContext(), form.Username, c.FormValue("password"), db.RoleUser)
	h.auditSignIn(c, db.AuditRegister, form.Username, u, err)
	if err != nil {
		if db.ErrorCode(err) == db.EINTERNAL {
			return err
		}
		form.Error = db.ErrorMessage(err)
		return render(c, fiber.StatusUnprocessableEntity, views.RegisterPage(h.page(c, "Sign up"), form))
	}
	h.setSession(c, h.Tokens.Sign(u))
	return redirectWithFlash(c, "/", "Welcome, "+u.Username+"! Your account is ready.")
}

// Logout clears the session cookie.
func (h *Handlers) Logout(c *fiber.Ctx) error {
	c.Cookie(&fiber.Cookie{Name: SessionCookie, Value: "", Path: "/", Expires: time.Unix(1, 0), HTTPOnly: true, SameSite: "Lax"})
	return redirectWithFlash(c, "/", "You are logged out.")
}

// safeNext keeps post-login redirects on this site.
func safeNext(next string) string {
	if len(next) > 1 && next[0] == '/' && next[1] != '/' && next[1] != '\\' {
		return next
	}
	return "/"
}
