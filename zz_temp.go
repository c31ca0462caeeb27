package main

// TEMPORARY until the lower-layer work lands.
func (ps problems) capped() problems              { return ps }
func position(data []byte, loc string) (int, int) { return 0, 0 }
