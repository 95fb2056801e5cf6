// Package model holds the plain types that pages, the API and storage share:
// what a user, a goods, an order, a red packet or a coupon is, with the
// small pure rules that read them. It imports nothing that stores anything,
// so views depend on it alone.
package model
