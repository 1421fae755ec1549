# What CI passes for a pull request (terraform loads this file by itself).
pull_request = 42
