module phase0

go 1.26.8
