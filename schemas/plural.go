package schemas

import "strconv"

// Plural writes n with the singular or the plural noun: "1 image",
// "0 images", "2 images". Agents and the CLI use it for every count they
// show a person.
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
