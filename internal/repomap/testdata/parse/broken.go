package broken

import "os"

func Good() int { return 1 }

func Bad( {
	x := 
}

type T struct {
