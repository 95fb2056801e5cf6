package main

import "github.com/seckill/seckill/cmd/seckill/app"

// The process's types and constructors by the names this package's tests
// used when Main lived in package main (the process is package app now).
type (
	Main   = app.Main
	Config = app.Config
	Area   = app.Area
)

const (
	ModeServe  = app.ModeServe
	ModeWeb    = app.ModeWeb
	ModeWorker = app.ModeWorker
)

var (
	NewMain       = app.NewMain
	DefaultConfig = app.DefaultConfig
	ParseConfig   = app.ParseConfig
)
