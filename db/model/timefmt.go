package model

// TimeLayout is how the shop writes an instant for people, on pages and in
// messages ("2 Jan 2006, 15:04", then the zone); static/app.js's formatTime
// writes the same shape in the reader's zone.
const TimeLayout = "2 Jan 2006, 15:04"
