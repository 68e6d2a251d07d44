module schedlab/go

go 1.19
