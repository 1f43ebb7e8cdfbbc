import { z } from 'zod';

/*
 * The parties of an invoice (API.md §3, §7, §12): a postal address, as an account and a customer
 * carry it, and a customer's tax ids. Both are checked here, once, for REST, GraphQL and the CLI.
 */

/**
 * ISO 3166-1 alpha-2, every officially assigned code (249), plus `XK` (Kosovo: user-assigned, but
 * what tax authorities and card networks use).
 */
export const COUNTRY_CODES: readonly string[] = (
  ('AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF '
    + 'CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH '
    + 'GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW '
    + 'KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG '
    + 'NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN '
    + 'SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS XK YE '
    + 'YT ZA ZM ZW').split(' ')
);
const COUNTRY_SET = new Set(COUNTRY_CODES);

export function isCountryCode(code: string): boolean {
  return COUNTRY_SET.has(code);
}

/** A postal address as the API returns it; `line2` and `state` are null when not given. */
export interface PostalAddress {
  line1: string;
  line2: string | null;
  postalCode: string;
  city: string;
  state: string | null;
  country: string;
}

const ADDRESS_COUNTRY_ERROR = 'must be an ISO 3166-1 alpha-2 country code, such as DE or GB';

/** One line of an address: trimmed, not empty, no line breaks (each part is one printed line). */
const addressLine = (max: number) =>
  z
    .string({ error: 'must be text' })
    .trim()
    .min(1, { error: 'must not be empty' })
    .max(max, { error: `must be at most ${max} characters` })
    .regex(/^[^\r\n\t\u2028\u2029]*$/, { error: 'must be one line (no line breaks)' });

/** An optional part (`line2`, `state`): empty or null reads as not given. */
const optionalLine = (max: number) =>
  z
    .string({ error: 'must be text' })
    .trim()
    .max(max, { error: `must be at most ${max} characters` })
    .regex(/^[^\r\n\t\u2028\u2029]*$/, { error: 'must be one line (no line breaks)' })
    .nullable()
    .optional()
    .transform((v) => (v ? v : null));

/**
 * `{line1, line2?, postalCode, city, state?, country}`: a whole address each time (a PATCH
 * replaces it; `null` removes it). `postalCode` may be empty for countries without postal codes.
 */
export const addressSchema = z
  .object({
    line1: addressLine(200),
    line2: optionalLine(200),
    postalCode: z
      .string({ error: 'must be text' })
      .trim()
      .max(20, { error: 'must be at most 20 characters' })
      .regex(/^[0-9A-Za-z -]*$/, { error: 'must be a postal code: letters, digits, spaces and hyphens' })
      .transform((v) => v.toUpperCase()),
    city: addressLine(100),
    state: optionalLine(100),
    country: z
      .string({ error: ADDRESS_COUNTRY_ERROR })
      .trim()
      .transform((v) => v.toUpperCase())
      .refine(isCountryCode, { error: ADDRESS_COUNTRY_ERROR })
      .meta({ description: 'ISO 3166-1 alpha-2 (any case; returned upper-case)' }),
  }, { error: 'must be an address {line1, line2?, postalCode, city, state?, country}' })
  .strict();

/** An address as the API returns it (OpenAPI). */
export const addressOut = z
  .object({
    line1: z.string(),
    line2: z.string().nullable(),
    postalCode: z.string(),
    city: z.string(),
    state: z.string().nullable(),
    country: z.string().meta({ description: 'ISO 3166-1 alpha-2' }),
  })
  .meta({ description: 'A postal address, printed on invoices.' });

/**
 * The tax id types a customer's `taxIds` take (Stripe's names), each with the form its value must
 * have once spaces are removed and letters upper-cased.
 */
export const TAX_ID_TYPES = {
  /** EU VAT number with its country prefix (`EL` for Greece, `XI` for Northern Ireland). */
  eu_vat: /^(AT|BE|BG|CY|CZ|DE|DK|EE|EL|ES|FI|FR|HR|HU|IE|IT|LT|LU|LV|MT|NL|PL|PT|RO|SE|SI|SK|XI)[0-9A-Z+*]{2,12}$/,
  /** United Kingdom VAT number. */
  gb_vat: /^GB([0-9]{9}|[0-9]{12}|GD[0-9]{3}|HA[0-9]{3})$/,
  /** Swiss UID with its VAT suffix: `CHE-123.456.789 MWST`. */
  ch_vat: /^CHE-?[0-9]{3}\.?[0-9]{3}\.?[0-9]{3}(MWST|TVA|IVA)?$/,
  /** Norwegian VAT number: `123456789MVA`. */
  no_vat: /^(NO)?[0-9]{9}(MVA)?$/,
  /** United States Employer Identification Number: `12-3456789`. */
  us_ein: /^[0-9]{2}-?[0-9]{7}$/,
  /** Canadian Business Number. */
  ca_bn: /^[0-9]{9}$/,
  /** Canadian GST/HST number: `123456789RT0001`. */
  ca_gst_hst: /^[0-9]{9}RT[0-9]{4}$/,
  /** Australian Business Number. */
  au_abn: /^[0-9]{11}$/,
  /** New Zealand GST number. */
  nz_gst: /^[0-9]{2,3}-?[0-9]{3}-?[0-9]{3}$/,
  /** Indian GSTIN. */
  in_gst: /^[0-9]{2}[A-Z]{5}[0-9]{4}[A-Z][0-9A-Z]Z[0-9A-Z]$/,
  /** Japanese Corporate Number. */
  jp_cn: /^[0-9]{13}$/,
  /** Singapore UEN. */
  sg_uen: /^([0-9]{8}[A-Z]|[0-9]{9}[A-Z]|[TSR][0-9]{2}[A-Z]{2}[0-9]{4}[A-Z])$/,
  /** South African VAT number. */
  za_vat: /^4[0-9]{9}$/,
  /** Brazilian CNPJ. */
  br_cnpj: /^[0-9]{2}\.?[0-9]{3}\.?[0-9]{3}\/?[0-9]{4}-?[0-9]{2}$/,
  /** Mexican RFC. */
  mx_rfc: /^[A-ZÑ&]{3,4}[0-9]{6}[A-Z0-9]{3}$/,
} as const;

export type TaxIdType = keyof typeof TAX_ID_TYPES;
export const TAX_ID_TYPE_NAMES = Object.keys(TAX_ID_TYPES) as TaxIdType[];

/** At most this many tax ids per customer. */
export const MAX_TAX_IDS = 5;

export interface TaxId {
  type: TaxIdType;
  value: string;
}

const TAX_ID_TYPE_ERROR = `must be one of: ${TAX_ID_TYPE_NAMES.join(', ')}`;

/** `{type, value}`: the value kept with its spaces removed and letters upper-cased (`de 123 456 789` → `DE123456789`). */
export const taxIdSchema = z
  .object({
    type: z.enum(TAX_ID_TYPE_NAMES as [TaxIdType, ...TaxIdType[]], { error: TAX_ID_TYPE_ERROR }),
    value: z
      .string({ error: 'must be a tax id' })
      .max(64, { error: 'must be at most 64 characters' })
      .transform((v) => v.replace(/\s+/g, '').toUpperCase())
      .pipe(z.string().min(1, { error: 'must not be empty' })),
  }, { error: 'must be a tax id {type, value}' })
  .strict()
  .superRefine((id, ctx) => {
    if (!TAX_ID_TYPES[id.type].test(id.value)) ctx.addIssue({ code: 'custom', path: ['value'], message: `is not a valid ${id.type} number` });
  });

/** A customer's tax ids: a whole list each time (a PATCH replaces it; `null` or `[]` removes them all). */
export const taxIdsSchema = z
  .array(taxIdSchema, { error: 'must be a list of tax ids [{type, value}]' })
  .max(MAX_TAX_IDS, { error: `must list at most ${MAX_TAX_IDS} tax ids` })
  .superRefine((ids, ctx) => {
    ids.forEach((id, i) => {
      if (ids.findIndex((other) => other.type === id.type && other.value === id.value) < i) {
        ctx.addIssue({ code: 'custom', path: [i], message: 'repeats an earlier tax id' });
      }
    });
  });

export const taxIdOut = z
  .object({
    type: z.enum(TAX_ID_TYPE_NAMES as [TaxIdType, ...TaxIdType[]]),
    value: z.string(),
  })
  .meta({ description: 'A tax id of the customer, printed on its invoices.' });

/** The account's own tax id (e.g. its VAT number): free form, printed as given. */
export const accountTaxIdSchema = z
  .string({ error: 'must be a tax id, such as a VAT number' })
  .trim()
  .min(1, { error: 'must not be empty' })
  .max(64, { error: 'must be at most 64 characters' })
  .regex(/^[^\r\n\t\u2028\u2029]*$/, { error: 'must be one line (no line breaks)' });

/** A stored address (JSON text, or an object on PostgreSQL JSON reads), or null. */
export function readAddress(value: unknown): PostalAddress | null {
  if (value === null || value === undefined || value === '') return null;
  const parsed = typeof value === 'string' ? (JSON.parse(value) as PostalAddress) : (value as PostalAddress);
  return {
    line1: parsed.line1, line2: parsed.line2 ?? null, postalCode: parsed.postalCode, city: parsed.city, state: parsed.state ?? null, country: parsed.country,
  };
}

/** Stored tax ids (JSON text), `[]` when none. */
export function readTaxIds(value: unknown): TaxId[] {
  if (value === null || value === undefined || value === '') return [];
  const parsed = typeof value === 'string' ? (JSON.parse(value) as TaxId[]) : (value as TaxId[]);
  return parsed.map((id) => ({ type: id.type, value: id.value }));
}

/** What a column holds for an address: its JSON, in the API's key order, or null. */
export function storeAddress(address: PostalAddress | null | undefined): string | null {
  return address ? JSON.stringify(readAddress(address)) : null;
}
