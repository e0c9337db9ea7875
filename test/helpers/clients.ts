// Tests pay with the same official-client payer as `npm run pay` and the dev demo.
export { type PayerKeys, type Preference, paidFetch, payerClient } from '../../src/devnet/payer.js'
