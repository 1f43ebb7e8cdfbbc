import { Field, InputType, ObjectType, registerEnumType } from 'type-graphql';
import { TAX_ID_TYPE_NAMES, type TaxIdType as TaxIdTypeName } from '../../src/core/parties';
import { plainInput } from './common';
import { Country } from './enums';

/*
 * The parties of an invoice (API.md §3, §7): an address as accounts and customers carry it, and a
 * customer's tax ids. The service checks them (core/parties.ts), as for REST bodies.
 */

export const TaxIdType = Object.fromEntries(TAX_ID_TYPE_NAMES.map((t) => [t, t])) as { [K in TaxIdTypeName]: K };
registerEnumType(TaxIdType, { name: 'TaxIdType', description: "A tax id's kind (Stripe's names): eu_vat, gb_vat, us_ein, …" });

@ObjectType('Address', { description: 'A postal address, printed on invoices.' })
export class AddressType {
  @Field(() => String) line1!: string;
  @Field(() => String, { nullable: true }) line2!: string | null;
  @Field(() => String) postalCode!: string;
  @Field(() => String) city!: string;
  @Field(() => String, { nullable: true }) state!: string | null;
  @Field(() => Country, { description: 'ISO 3166-1 alpha-2' }) country!: string;
}

@InputType('AddressInput', { description: 'A whole address: it replaces the one held (null removes it).' })
export class AddressInput {
  @Field(() => String) line1!: string;
  @Field(() => String, { nullable: true }) line2?: string | null;
  @Field(() => String) postalCode!: string;
  @Field(() => String) city!: string;
  @Field(() => String, { nullable: true }) state?: string | null;
  @Field(() => String, { description: 'ISO 3166-1 alpha-2' }) country!: string;
}

@ObjectType('TaxId', { description: 'A tax id of the customer, printed on its invoices.' })
export class TaxIdObject {
  @Field(() => TaxIdType) type!: TaxIdTypeName;
  @Field(() => String) value!: string;
}

@InputType('TaxIdInput')
export class TaxIdInput {
  @Field(() => TaxIdType) type!: TaxIdTypeName;
  @Field(() => String) value!: string;
}

/**
 * `defined(input)` with its address and tax ids as the JSON REST would get (type-graphql hands
 * nested inputs over as class instances); null (remove) stays null.
 */
export function withParties(input: Record<string, unknown>): Record<string, unknown> {
  const out = { ...input };
  if (out.address) out.address = plainInput(out.address as AddressInput);
  if (Array.isArray(out.taxIds)) out.taxIds = out.taxIds.map((id: TaxIdInput) => plainInput(id));
  return out;
}
