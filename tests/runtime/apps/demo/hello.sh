#!/bin/sh
# Prints its handler name and working directory (relative-path command).
echo "hello $RELAY_HANDLER"
pwd
