package account

import (
	"regexp"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9_]{3,32}$`)

// ValidateCredentials checks a username and password against the account
// rules; the error names the fields "username" and "password".
func ValidateCredentials(username, password string) error {
	bad := db.FieldErrors{}
	if !usernameRE.MatchString(username) {
		bad["username"] = "must be 3–32 letters, digits or underscores"
	}
	if p := passwordProblem(password); p != "" {
		bad["password"] = p
	}
	return bad.Err()
}

// passwordProblem says what is wrong with a new password, or "" when nothing is.
// bcrypt reads at most 72 bytes, so a longer password would be cut silently.
func passwordProblem(password string) string {
	if len(password) < 8 || len(password) > 72 {
		return "must be 8 to 72 characters"
	}
	return ""
}

// roleProblem says what is wrong with a role, or "" when it is one of the known roles.
func roleProblem(role string) string {
	if !ValidRole(role) {
		return "must be user, merchant or admin"
	}
	return ""
}

// ValidRole reports whether role is one of the known roles.
func ValidRole(role string) bool {
	return role == model.RoleUser || role == model.RoleMerchant || role == model.RoleAdmin
}
