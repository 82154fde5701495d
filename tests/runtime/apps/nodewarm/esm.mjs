// An ES module: imported by handlers.features, and a handler itself.
export const value = 'esm';

export async function main(ev) {
	await new Promise((r) => setTimeout(r, 1));
	console.log(`esm ${JSON.stringify(ev)} ${import.meta.url.startsWith('file:')}`);
}
