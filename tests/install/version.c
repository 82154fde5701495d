/* version.c - print relay_version() (for check-version.sh). */
#include <stdio.h>

#include <relay/relay.h>

int main(void)
{
	puts(relay_version());
	return 0;
}
