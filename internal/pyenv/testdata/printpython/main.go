// Prints pyenv.DefaultPython(): built by TestLinkerFlag with the Makefile's -X flag.
package main

import (
	"fmt"
	"os"

	"phase0/internal/pyenv"
)

func main() {
	py, err := pyenv.DefaultPython()
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(py)
}
